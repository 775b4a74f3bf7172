"""moto_launcher.py - run moto's server with two gap-fillers for TorchX tests (used by moto-up.sh).

    python moto_launcher.py -H 127.0.0.1 -p 5055        (same arguments as `moto_server`)

Patches:
  * SageMaker StopTrainingJob, only if moto lacks it (5.2.x answers HTTP 500): an InProgress job
    becomes Stopped; any other status -> ValidationException, as AWS does.
  * Optional training-job lifecycle (moto marks every job Completed at creation):
      MOTO_SM_TRAINING_SECONDS=N   job is InProgress (SecondaryStatus Training) for N seconds,
      MOTO_SM_FINAL_STATUS=Completed|Failed   ...then this status (default Completed).
    Unset = moto's behaviour (Completed immediately).
"""
import os
import sys
import time

from moto.sagemaker import models as sm_models
from moto.sagemaker.exceptions import ValidationError
from moto.sagemaker.responses import SageMakerResponse
from moto.core.responses import ActionResult

RUN_S = os.environ.get("MOTO_SM_TRAINING_SECONDS")
FINAL = os.environ.get("MOTO_SM_FINAL_STATUS", "Completed")
SECONDARY = {"Completed": "Completed", "Failed": "Failed", "Stopped": "Stopped"}


_T0 = {}  # training job arn -> creation time (lifecycle mode)


def _refresh(job):
    """Lifecycle mode: InProgress for RUN_S seconds after creation, then FINAL."""
    if RUN_S is None or job.arn not in _T0:
        return
    if job.training_job_status == "InProgress" and time.time() - _T0[job.arn] >= float(RUN_S):
        job.training_job_status = FINAL
        job.secondary_status = SECONDARY.get(FINAL, FINAL)
        if FINAL == "Failed":
            job.failure_reason = "AlgorithmError: simulated failure (MOTO_SM_FINAL_STATUS=Failed)"


if RUN_S is not None:
    _orig_init = sm_models.FakeTrainingJob.__init__

    def _init(self, *args, **kwargs):
        _orig_init(self, *args, **kwargs)
        self.training_job_status, self.secondary_status = "InProgress", "Training"
        self.training_end_time = None
        _T0[self.arn] = time.time()

    sm_models.FakeTrainingJob.__init__ = _init
    B = sm_models.SageMakerModelBackend
    for _name in ("describe_training_job", "list_training_jobs"):
        def _wrap(orig):
            def wrapper(self, *args, **kwargs):
                for job in self.training_jobs.values():
                    _refresh(job)
                return orig(self, *args, **kwargs)
            return wrapper
        setattr(B, _name, _wrap(getattr(B, _name)))


if not hasattr(SageMakerResponse, "stop_training_job"):
    def stop_training_job(self):
        name = self._get_param("TrainingJobName")
        jobs = self.sagemaker_backend.training_jobs
        if name not in jobs:
            arn = sm_models.FakeTrainingJob.arn_formatter(name, self.current_account, self.region)
            raise ValidationError(message=f"Could not find training job '{arn}'.")
        job = jobs[name]
        _refresh(job)
        status = job.training_job_status
        if status != "InProgress":
            raise ValidationError(message=f"The request was rejected because the training job is in status {status}.")
        job.training_job_status, job.secondary_status = "Stopped", "Stopped"
        return ActionResult({})

    SageMakerResponse.stop_training_job = stop_training_job


if __name__ == "__main__":
    from moto.server import main

    sys.exit(main(sys.argv[1:]))
