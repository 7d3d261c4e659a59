from corpusprep.launch import main

main()
