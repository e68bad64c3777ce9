from kraftcheck.cli import main

main()
