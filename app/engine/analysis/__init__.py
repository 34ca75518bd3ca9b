"""The analysis of runs: comparing two runs (compare, comparison), explaining a run's speed
(explanation) and the drafter experiment (sweep). Pure data where it can be, so the UI imports it
without torch; ``comparison`` and ``sweep`` drive an ``Engine`` they are handed."""
