"""Storage: FileIO over fsspec (the only code that touches storage) and its retries."""
