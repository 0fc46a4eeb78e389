"""The core objects: skills and pools, edits, credit, evidence shown to the optimizer, prompts."""
