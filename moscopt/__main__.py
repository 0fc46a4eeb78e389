from moscopt.cli import main

main()
