"""The mixins of the base class, one family of methods each, and the class registry they share."""
