"""What the email sequencer reads: the export row, its cells, the email template and preview."""
