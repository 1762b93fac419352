"""The Memory Manager: the cycle beat fires every 15 minutes and the phases it runs."""
