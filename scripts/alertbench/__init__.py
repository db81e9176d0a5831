"""The alert benchmark's parts: `oomtext` reads the frameworks' out-of-memory texts, `series`
finds how long a figure climbed, `truth` decides each run's truth from the job's own figures
(`scripts/alert_bench.py prepare`), `score` scores gpumon's alerts against it (`... score`)."""
