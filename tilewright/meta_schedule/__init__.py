"""The auto-scheduler (TVM's ``meta_schedule`` names): design spaces of stochastic schedules.

``TuneContext`` ties a module and a target to a space generator; the space generator applies
schedule rules to the module's blocks and returns schedules whose traces hold sampling
decisions; postprocessors finish or reject a sampled schedule; mutators change one decision.
"""
