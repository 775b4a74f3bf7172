"""torchx schedulers for AWS: ``aws_batch`` (AWS Batch) and ``aws_sagemaker`` (SageMaker training jobs).

Both talk to AWS through boto3, imported only when a scheduler is used. Credentials and
region come from boto3's standard chain; ``AWS_ENDPOINT_URL`` points every client at
another endpoint (e.g. a local emulator).
"""

__version__ = "0.1.0"
