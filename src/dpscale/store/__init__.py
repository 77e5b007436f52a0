"""Stored data: feedback from the pages and measurement runs (SQLAlchemy)."""
