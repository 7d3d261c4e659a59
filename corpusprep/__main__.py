from corpusprep.cli import main

main()
