"""The Elasticsearch adapter of the KnowledgeSearchPort, plus index creation and bulk writes."""
