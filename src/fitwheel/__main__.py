from fitwheel.cli.main import main

raise SystemExit(main())
