import RPG

RPGServer.main()
