"""The trained Refiner as an OpenAI-compatible service (``stackelberg serve``).

An agent written anywhere sends its draft speech and the game around it as a chat request
and gets the Refiner's rewrite back, prompted exactly as the Refiner was trained
(``agents.refiner``); an optional second endpoint returns the Measurer's reward of given
candidates (``persuasion.measurer.measure``). One module per job: ``bodies`` (what a request
may hold, checked into one-line errors), ``service`` (prompts, batched generation and
scoring, no HTTP), ``collector`` (concurrent requests gathered into shared batches on one
model thread), ``app`` (the HTTP endpoints, FastAPI), ``server`` (startup checks, loading,
uvicorn). FastAPI and uvicorn come with the ``serve`` extra; importing this package needs
neither. docs/interop.md describes the requests.
"""
