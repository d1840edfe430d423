"""task_scheduler."""
