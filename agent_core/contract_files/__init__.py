"""The files written from the contract (agent_core/contract) and every tool's argument model: the schema
catalog, the OpenAPI document and the panel's contract.gen.ts. A floor above the tools, as it reads
their registry; scripts/generate_contract.py writes the files and tests/test_contract.py checks them."""
