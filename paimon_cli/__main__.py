from paimon_cli.main import main

# Guarded: worker processes (spawn) import the main module again and must not run the CLI.
if __name__ == "__main__":
    main()
