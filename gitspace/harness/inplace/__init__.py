"""Recording a harness in a person's own checkout, where nothing of theirs moves: the line
(``line.py``), the place its calls are recorded on (``place.py``), the commands the person runs
there (``commands.py``: recording on and off, undo, rewind; ``takeback.py``) and its gc
(``gc.py``)."""
