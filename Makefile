# Two commands do all set-up on a fresh machine: `make demo` and `make test`.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
INSTALLED := $(VENV)/.installed
DEMO_OUTPUT := out/demo.jpg

.PHONY: demo test models bench clean

$(INSTALLED): pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet --upgrade pip
	$(BIN)/python -m pip install --quiet -e ".[test]"
	touch $(INSTALLED)

models: $(INSTALLED)
	$(BIN)/slimfuse models fetch --quiet

demo: models
	mkdir -p $(dir $(DEMO_OUTPUT))
	$(BIN)/slimfuse swap --quiet \
		-s "$$($(BIN)/python -m slimfuse.samples astronaut)" \
		-t "$$($(BIN)/python -m slimfuse.samples grace_hopper)" \
		-o $(DEMO_OUTPUT)

test: models
	$(BIN)/python -m pytest -q -n auto --maxprocesses 4 --dist loadfile

bench: models
	$(BIN)/slimfuse bench image
	$(BIN)/slimfuse bench video
	$(BIN)/slimfuse bench memory

clean:
	rm -rf $(VENV) out .pytest_cache
