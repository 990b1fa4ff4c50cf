"""Data sets (loaded as whole tensors) and the partitions that split them among clients."""
from .base import FedData
from .datasets import DATASETS, data_root, load_dataset
from .partition import PARTITIONS, label_histogram, make_partition, partition_summary

__all__ = ["DATASETS", "PARTITIONS", "FedData", "data_root", "label_histogram", "load_dataset",
           "make_partition", "partition_summary"]
