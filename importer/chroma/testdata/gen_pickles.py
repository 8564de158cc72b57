# Writes the index_metadata.pickle fixtures the tests read, as the two Chroma implementations
# write them: Python Chroma pickles a PersistentData object (HIGHEST_PROTOCOL, 5 on Python
# 3.8+), Chroma 1.x's Rust segment a plain dict (serde_pickle, protocol 3).
# Run: python3 gen_pickles.py (from this directory).
import pickle, sys, types

# Stand-ins for Chroma's module path, so pickle records the class under its real name.
name = "chromadb.segment.impl.vector.local_persistent_hnsw"
parts = name.split(".")
for i in range(1, len(parts) + 1):
    sys.modules[".".join(parts[:i])] = types.ModuleType(".".join(parts[:i]))
mod = sys.modules[name]


class PersistentData:
    def __init__(self, dimensionality, total_elements_added, id_to_label, label_to_id, id_to_seq_id):
        self.dimensionality = dimensionality
        self.total_elements_added = total_elements_added
        self.id_to_label = id_to_label
        self.label_to_id = label_to_id
        self.id_to_seq_id = id_to_seq_id


PersistentData.__module__ = mod.__name__
mod.PersistentData = PersistentData

label_to_id = {1: "rec-1", 2: "rec-2", 3: "rec-3", 5: "rec-6", 2**40: "far-label"}
id_to_label = {v: k for k, v in label_to_id.items()}
data = PersistentData(4, 5, id_to_label, label_to_id, {k: 7 for k in id_to_label})
data.max_seq_id = 7  # the legacy field, still pickled by Chroma 0.5 and 0.6
with open("persistent_data.pickle", "wb") as f:
    pickle.dump(data, f, pickle.HIGHEST_PROTOCOL)

rust = {"dimensionality": 4, "total_elements_added": 5, "max_seq_id": None,
        "id_to_label": id_to_label, "label_to_id": label_to_id, "id_to_seq_id": {k: 7 for k in id_to_label}}
with open("idmap_rust.pickle", "wb") as f:
    pickle.dump(rust, f, 3)
