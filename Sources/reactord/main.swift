import ReactorServer

Reactord.main()
