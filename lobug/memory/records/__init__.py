"""Records: the /v1 service layer (access-checked reads and writes, recall, input validation) that
HTTP and the CLI share.
"""
