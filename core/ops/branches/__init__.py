"""The branch lifecycle: create-branch, delete-branch, fast-forward."""
