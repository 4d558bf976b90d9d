"""The public surface of rag-evidence for pipeline authors: what to import to put the evidence
step into a Beam pipeline of your own. It only re-exports; everything else is internal.

Usage::

    import apache_beam as beam
    from pipeline.api import (EvidenceTransform, embedder_factory_for, load_settings,
                              port_factory_for)
    settings = load_settings("configs/local.yaml")
    outputs = queries | EvidenceTransform(
        settings, port_factory=port_factory_for(settings),
        embedder_factory=embedder_factory_for(settings))
    outputs.results, outputs.dead_letters
"""

from connectors.chunk_record import ChunkRecord
from connectors.embedder_port import EmbedderFactory, EmbedderInfo, EmbedderPort
from connectors.search_port import KnowledgeSearchPort, PortFactory, SearchHit, SearchRequest
from core.errors import (
    ConfigError,
    InvalidInputError,
    KnowledgeSearchError,
    RagEvidenceError,
)
from pipeline.config.backends import embedder_factory_for, port_factory_for
from pipeline.config.loader import load_settings
from pipeline.config.settings import Settings
from pipeline.io.es_sink import WriteEvidenceToElasticsearch
from pipeline.run.evidence_transform import EvidenceOutputs, EvidenceTransform
from stages.models import DeadLetter, EvidenceBlock, ProjectedItem, Query, QueryResult

__all__ = [
    "ChunkRecord",
    "ConfigError",
    "DeadLetter",
    "EmbedderFactory",
    "EmbedderInfo",
    "EmbedderPort",
    "EvidenceBlock",
    "EvidenceOutputs",
    "EvidenceTransform",
    "InvalidInputError",
    "KnowledgeSearchError",
    "KnowledgeSearchPort",
    "PortFactory",
    "ProjectedItem",
    "Query",
    "QueryResult",
    "RagEvidenceError",
    "SearchHit",
    "SearchRequest",
    "Settings",
    "WriteEvidenceToElasticsearch",
    "embedder_factory_for",
    "load_settings",
    "port_factory_for",
]
