"""Cost models: scores that rank candidates before they are measured (TVM's
``ms.cost_model``)."""

from tilewright.meta_schedule.cost_model.cost_model import CostModel
from tilewright.meta_schedule.cost_model.random_model import RandomModel
from tilewright.meta_schedule.cost_model.xgb_model import XGBConfig, XGBModel, pool_features

# TVM's subclassable spelling; the base class here is a Python class already.
PyCostModel = CostModel

__all__ = ["PyCostModel", "CostModel", "RandomModel", "XGBConfig", "XGBModel", "pool_features"]
