"""Client execution engines, the client-program contract they run, and the functional view of models they share."""
from .engines import ENGINES, Engine, RoundResult, SequentialEngine, VectorizedEngine, choose_engine
from .functional import ClientData, FlatModel, evaluate, make_client_step
from .plan import ClientPlan, local_steps, make_plan
from .program import Batch, ClientInput, ClientProgram, LocalData

__all__ = ["ENGINES", "Batch", "ClientData", "ClientInput", "ClientPlan", "ClientProgram", "Engine", "FlatModel",
           "LocalData", "RoundResult", "SequentialEngine", "VectorizedEngine", "choose_engine", "evaluate",
           "local_steps", "make_client_step", "make_plan"]
