"""Reading the input files into the data model: formats and limits, columns, validation, the audit
of what was read."""
