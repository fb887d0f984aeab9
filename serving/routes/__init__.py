"""The HTTP routes of the Ingress, by concern: answers, the OpenAI surface, documents and
their pages, writes, health and metrics. Each module holds a FastAPI ``router`` and the mixin
class whose methods are its handlers; ``serving.app.Ingress`` composes them."""
