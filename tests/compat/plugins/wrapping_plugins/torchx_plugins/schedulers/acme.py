from torchx.plugins import register
from torchx.schedulers.local_scheduler import create_scheduler as _local


@register.scheduler()
def acme(session_name: str, **kwargs):
    return _local(session_name, **kwargs)
