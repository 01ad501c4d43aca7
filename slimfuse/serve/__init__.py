"""`slimfuse serve`: the HTTP API and web page (FastAPI, the `serve` extra), a job store on SQLite, and worker
processes that run the jobs with slimfuse.Swapper. The API process never loads a model; workers do."""
