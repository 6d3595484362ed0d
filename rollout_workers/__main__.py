from rollout_workers.cli.main import main

main()
