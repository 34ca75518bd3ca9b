"""The decoding loop and its rules: propose → verify → accept (decode), the acceptance rules
(acceptance), sampling, the drafters, the cost model and k chooser (cost), detokenisation (detok) and
the answer as text with its stopping rules (answer_text).
It talks to a model only through a runner (``app.engine.runners``)."""
