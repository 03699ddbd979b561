"""Local browser playground for chapter 1 (``attnlab serve``); see server.py."""
