"""A reproducible data-analysis task benchmark for Cellwright (issue 26), in the style of
InfiAgent-DABench: questions over datasets generated with a fixed seed, a required answer format
(`@name[value]`), a checker with tolerance, run through a real Cellwright server the way the panel
drives it. `python -m bench.agent_tasks --help`."""
