"""Typed scalar expressions, below the plan: nodes (:mod:`.nodes`), constructors that bind
types and fold constants (:mod:`.build`), the function registry and its families
(:mod:`.functions`), the evaluator over chunks (:mod:`.evaluate`) and constants
(:mod:`.constants`). Nothing here imports the plan, lowering or execution layers."""
