"""Detecting what is worth remembering in a conversation: rules, the trained second stage, transcript formats."""
