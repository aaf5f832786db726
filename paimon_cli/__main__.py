from paimon_cli.main import main

main()
