"""``python -m torchx`` runs the CLI."""

from torchx.cli.main import main

if __name__ == "__main__":
    main()
