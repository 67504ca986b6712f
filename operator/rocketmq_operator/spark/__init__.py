"""PySpark data source for broker groups (spark extra). Executors import only remoting and pyarrow."""
