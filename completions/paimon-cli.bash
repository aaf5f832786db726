_paimon_cli_completion() {
    local IFS=$'
'
    COMPREPLY=( $( env COMP_WORDS="${COMP_WORDS[*]}" \
                   COMP_CWORD=$COMP_CWORD \
                   _PAIMON_CLI_COMPLETE=complete_bash $1 ) )
    return 0
}

complete -o default -F _paimon_cli_completion paimon-cli
