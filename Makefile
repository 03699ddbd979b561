# Two commands set everything up on a fresh machine:
#   make case   - reproduce the chapter's case study into mine/ (data/, figures/, reports/ and runs/
#                 there; the committed data/, figures/ and reports/ stay as they are)
#   make test   - run the test suite
PY      ?= python3
VENV    := .venv
BIN     := $(VENV)/bin
STAMP   := $(VENV)/.installed

.PHONY: setup case book test test-slow lint format corpus clean

setup: $(STAMP)

$(STAMP): pyproject.toml
	test -x $(BIN)/python || $(PY) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -e '.[web,test]'
	touch $(STAMP)

case: setup
	$(BIN)/attnlab case --out mine

test: setup
	$(BIN)/python -m pytest -q

lint: setup
	$(BIN)/ruff check src tests scripts notebooks
	$(BIN)/ruff format --check src tests scripts notebooks

format: setup
	$(BIN)/ruff format src tests scripts notebooks
	$(BIN)/ruff check --fix src tests scripts notebooks

test-slow: setup
	$(BIN)/python -m pytest -q -m slow

corpus: setup
	$(BIN)/attnlab build-corpus --source ../shared/data/chinese-poetry --out src/attnlab/data/corpus.txt

clean:
	rm -rf $(VENV) runs .pytest_cache

book: setup
	$(BIN)/attnlab book
