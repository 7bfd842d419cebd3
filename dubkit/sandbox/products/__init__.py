"""One module per product: its rules, and the handlers that answer its operations.

Which handler answers which operation is the explicit table in :mod:`.routes`; importing this
package registers nothing.
"""
