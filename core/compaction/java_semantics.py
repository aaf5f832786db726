"""Java arithmetic and string rules the merge engines depend on, so merged values are the
ones Paimon's Java merge functions would produce (overflow, float rounding, decimals,
``StringUtils.isBlank``)."""

from __future__ import annotations

import struct
from decimal import ROUND_HALF_UP, Decimal, localcontext

from core.errors import MergeFunctionError

INT_BITS = {"TINYINT": 8, "SMALLINT": 16, "INT": 32, "BIGINT": 64}
MAX_COMPACT_PRECISION = 18  # Decimal.MAX_COMPACT_PRECISION: unscaled value fits a long


class JavaArithmeticError(MergeFunctionError):
    """Java would throw here (``Math.addExact`` and friends): the merge stops."""


def exact_int(value: int, root: str, what: str) -> int:
    """``Math.*Exact`` for the integer type ``root``: the value, or an error on overflow."""
    bits = INT_BITS[root]
    low, high = -(1 << (bits - 1)), (1 << (bits - 1)) - 1
    if not low <= value <= high:
        raise JavaArithmeticError(f"{root.lower()} overflow: {what}")
    return value


def to_float32(value: float) -> float:
    """Round a Python float to Java's ``float`` (IEEE binary32), as every float op does."""
    return float(struct.unpack("<f", struct.pack("<f", value))[0])


def java_divide_int(a: int, b: int) -> int:
    """Java integer division truncates toward zero."""
    if b == 0:
        raise JavaArithmeticError("/ by zero")
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b >= 0) else -q


def decimal_digits(value: Decimal) -> int:
    """``BigDecimal.precision()``: digits of the unscaled value (0 has precision 1)."""
    digits = value.as_tuple().digits
    stripped = len(digits)
    return max(stripped, 1)


def from_big_decimal(value: Decimal, precision: int, scale: int) -> Decimal | None:
    """``Decimal.fromBigDecimal``: rescale HALF_UP; None when it no longer fits."""
    with localcontext() as ctx:
        ctx.prec = 200
        scaled = value.quantize(Decimal(1).scaleb(-scale), rounding=ROUND_HALF_UP)
    if decimal_digits(scaled) > precision:
        return None
    return scaled


def decimal_result(
    value: Decimal, precision: int, scale: int, compact_path: bool
) -> Decimal | None:
    """Result of ``DecimalUtils.add``/``subtract``: on the compact (long) path Java keeps a
    value wider than the precision, which no file column can hold, so that is refused."""
    out = from_big_decimal(value, precision, scale)
    if out is None and compact_path and precision <= MAX_COMPACT_PRECISION:
        raise JavaArithmeticError(
            f"decimal result {value} exceeds DECIMAL({precision}, {scale}); Paimon would keep "
            "an out-of-range value here"
        )
    return out


def decimal_add(a: Decimal, b: Decimal) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 200
        return a + b


def decimal_sub(a: Decimal, b: Decimal) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 200
        return a - b


def decimal_mul(a: Decimal, b: Decimal) -> Decimal:
    with localcontext() as ctx:
        ctx.prec = 400
        return a * b


# Character.isWhitespace: Unicode space separators except the non-breaking ones, plus the
# ASCII controls \t \n \v \f \r and the separators \x1c-\x1f.
_NON_BREAKING = {"\u00a0", "\u2007", "\u202f"}
_SPACE_SEPARATORS = {
    "\u0020",
    "\u1680",
    *(chr(c) for c in range(0x2000, 0x200B)),
    "\u2028",
    "\u2029",
    "\u205f",
    "\u3000",
}
_JAVA_WHITESPACE = frozenset(
    (_SPACE_SEPARATORS - _NON_BREAKING)
    | {"\t", "\n", "\u000b", "\f", "\r"}
    | {chr(c) for c in range(0x1C, 0x20)}
)


def is_blank(text: str | None) -> bool:
    """``StringUtils.isBlank``: null, empty, or only Java whitespace."""
    return text is None or all(ch in _JAVA_WHITESPACE for ch in text)


__all__ = [
    "INT_BITS",
    "JavaArithmeticError",
    "decimal_add",
    "decimal_mul",
    "decimal_result",
    "decimal_sub",
    "exact_int",
    "from_big_decimal",
    "is_blank",
    "java_divide_int",
    "to_float32",
]
