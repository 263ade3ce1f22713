from ._cli.commands import main

main()
