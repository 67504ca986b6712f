"""The API: pydantic models of BrokerGroup/ControllerGroup, the validation rules (Python and CEL), the CRDs.

Pure: imports stdlib, pydantic and yaml only. `validation.validate_document` never raises on bad input.
"""
