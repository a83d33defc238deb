"""python -m gitspace"""

from gitspace.cli import main

main()
