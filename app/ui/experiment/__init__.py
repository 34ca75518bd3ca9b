"""The drafter experiment: a sweep over drafters and draft lengths, its table and chart."""
