from dashboard.cli import main

raise SystemExit(main())
