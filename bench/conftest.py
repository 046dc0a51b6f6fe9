import os
import sys

# The benchmark modules import each other by name.
sys.path.insert(0, os.path.dirname(__file__))
