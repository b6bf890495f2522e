from xling.cli import main

main()
