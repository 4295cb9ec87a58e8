"""Wordings that name the host machine's RAM as what ran out, beyond ``rules_extra``'s table
(docpost24, issue 9, after heldout48's scientific-ML threads).

Read by :func:`oomkit.diagnose.rules_extra.names_host_memory`, whose GPU-word veto still
applies. Each is a mechanism, not one record's words:

* The machine's own memory named, or sized as the machine's ("my machine memory always
  overflow", "My personal computer has 128 gigs of memory ... exhaust this memory"): a
  computer's memory is its RAM; a card's memory is named as the GPU's, which the veto reads.
* A data set built, loaded or pre-processed when memory ran out ("out-of-memory error while
  preprocessing the papers-100M dataset", "run out of memory ... running `dataset =
  PygNodePropPredDataset(...)`"): a data set's pre-processing (reading raw files, building
  graphs and arrays, numpy/pandas/pyarrow) runs in the host process before any tensor is moved
  to a device; OGB's ``PygNodePropPredDataset.process`` reads the raw files into numpy arrays
  (snap-stanford/ogb ``ogb/io/read_graph_raw.py``, ``read_csv_graph_raw``).
* AutoGluon's pre-fit memory guard (autogluon/autogluon ``core/src/autogluon/core/models/
  abstract/abstract_model.py`` ``_validate_fit_memory_usage``: the estimate against
  ``psutil.virtual_memory().available``, "Not enough memory to safely train model, roughly
  requires: %s GB, but only %s GB is available..."; later "... Estimated to require %s GB out
  of %s GB available"), and the trainer's skip that follows ("Not enough memory to train
  <model>... Skipping this model."): both measure the host's available RAM.
"""

from __future__ import annotations

import re

__all__ = ["HOST_MACHINE"]

_MACHINE = r"(?:machine|computer|pc|laptop|desktop|workstation|server)"

HOST_MACHINE = re.compile(
    # the machine's memory named as such ("my machine memory", "the computer's memory")
    rf"\b{_MACHINE}(?:'s)?\s+(?:memory|ram)\b|"
    # the machine sized ("my computer has 128 gigs of memory", "a server with 256 GB RAM")
    rf"\b{_MACHINE}\s+(?:only\s+)?(?:has|had|with)\s+(?:only\s+)?\d{{1,4}}\s?"
    r"(?:gigs?|gb|gib|g|tb)\s+(?:of\s+)?(?:memory|ram)\b|"
    # a data set built, loaded or pre-processed
    r"\b(?:pre-?process(?:ing)?|load(?:ing)?|read(?:ing)?|build(?:ing)?|construct(?:ing)?)\s+"
    r"(?:the\s+|a\s+|my\s+|this\s+)?(?:[\w.-]{1,40}\s+){0,2}?data\s?set\b|"
    r"\bdataset\s{0,3}=\s{0,3}[\w.]{0,60}Dataset\(|"
    # AutoGluon's memory guard and the trainer's skip
    r"\bNot enough memory to safely train model\b|"
    r"\bNot enough memory to train \w{1,60}\.\.\. Skipping this model\b",
    re.IGNORECASE,
)
