# nni.trial as aah ships it: NNI's trial API (get_next_parameter,
# report_intermediate_result, report_final_result, the ids) in the
# standard library alone, speaking the protocol of NNI's own SDK byte for
# byte (docs/nni.md):
#
#   parameters  $NNI_SYS_DIR/parameter.cfg (parameter_<i>.cfg for the i-th
#               set when MULTI_PHASE is true), JSON {"parameter_id",
#               "parameter_source", "parameters", "parameter_index"};
#   metrics     JSON {"parameter_id", "trial_job_id", "type", "sequence",
#               "value": <the metric as JSON text>}, framed as
#               b"ME" + six digits (its length with the newline) + JSON + b"\n"
#               appended to $NNI_SYS_DIR/.nni/metrics when NNI_PLATFORM is
#               "local" (and REUSE_MODE is not true), else printed on stdout
#               as NNISDK_MEb'<JSON>'.
#
# Without NNI_PLATFORM (a trial run by hand) it behaves as NNI's standalone
# mode: no parameters, metrics logged.

import json
import logging
import os
import time

__all__ = [
    'get_next_parameter',
    'get_next_parameters',
    'get_current_parameter',
    'report_intermediate_result',
    'report_final_result',
    'get_experiment_id',
    'get_trial_id',
    'get_sequence_id',
]

_logger = logging.getLogger('nni')

_platform = os.environ.get('NNI_PLATFORM')
_experiment_id = os.environ.get('NNI_EXP_ID') or 'STANDALONE'
_trial_id = os.environ.get('NNI_TRIAL_JOB_ID') or 'STANDALONE'
_seq = os.environ.get('NNI_TRIAL_SEQ_ID')
_sequence_id = int(_seq) if _seq is not None else 0

_params = None
_param_index = 0
_intermediate_seq = 0
_metric_file = None


def _number(obj):
    # Scalars of numpy or torch (they have .item()) as the Python numbers
    # they hold; anything else is refused as json refuses it.
    item = getattr(obj, 'item', None)
    if callable(item):
        return item()
    raise TypeError('Object of type %s is not JSON serializable' % type(obj).__name__)


def _dump(obj):
    # NNI's nni.common.dump: json_tricks with json's default separators
    return json.dumps(obj, allow_nan=True, default=_number)


def _sysdir():
    sysdir = os.environ.get('NNI_SYS_DIR')
    if not sysdir:
        raise RuntimeError('NNI_PLATFORM is set but NNI_SYS_DIR is not: '
                           'the trial needs the directory of its parameter.cfg')
    return sysdir


def _open_channel():
    # What NNI's local channel does when it starts: .nni/ and the output
    # directory exist, the metrics file is open for appending.
    global _metric_file
    if _metric_file is None:
        nni_dir = os.path.join(_sysdir(), '.nni')
        os.makedirs(nni_dir, exist_ok=True)
        output_dir = os.environ.get('NNI_OUTPUT_DIR')
        if output_dir:
            os.makedirs(output_dir, exist_ok=True)
        _metric_file = open(os.path.join(nni_dir, 'metrics'), 'ab')
    return _metric_file


def _send(string):
    metric_file = _open_channel()
    if _platform != 'local' or os.environ.get('REUSE_MODE') in ('true', 'True'):
        assert len(string) < 1000000, 'Metric too long'
        print("NNISDK_MEb'%s'" % (string), flush=True)
        return
    data = (string + '\n').encode('utf8')
    assert len(data) < 1000000, 'Metric too long'
    metric_file.write(b'ME%06d%b' % (len(data), data))
    metric_file.flush()
    os.utime(metric_file.name)   # NNI touches the file: a watcher sees it change


def _receive_parameter():
    global _param_index
    multiphase = os.environ.get('MULTI_PHASE') in ('true', 'True')
    if not multiphase and _param_index > 0:
        return None
    name = 'parameter_%d.cfg' % _param_index if multiphase and _param_index > 0 else 'parameter.cfg'
    path = os.path.join(_sysdir(), name)
    _open_channel()
    if not os.path.isfile(path):
        _send(_dump({
            'trial_job_id': os.environ.get('NNI_TRIAL_JOB_ID'),
            'type': 'REQUEST_PARAMETER',
            'sequence': 0,
            'parameter_index': _param_index,
        }))
    while not (os.path.isfile(path) and os.path.getsize(path) > 0):
        time.sleep(3)
    with open(path, 'r') as f:
        params = json.load(f)
    _param_index += 1
    assert isinstance(params, dict) and 'parameters' in params
    return params


def get_next_parameter():
    """The hyperparameters the tuner chose for this trial (a dict)."""
    global _params
    if _platform is None:
        _logger.warning('Running trial code without runtime (NNI_PLATFORM is not set): '
                        'no parameters')
        _params = {'parameter_id': None, 'parameters': {}}
    else:
        _params = _receive_parameter()
    if _params is None:
        return None
    return _params['parameters']


def get_next_parameters():
    """Alias of get_next_parameter."""
    return get_next_parameter()


def get_current_parameter(tag=None):
    if _params is None:
        return None
    if tag is None:
        return _params['parameters']
    return _params['parameters'][tag]


def get_experiment_id():
    return _experiment_id


def get_trial_id():
    return _trial_id


def get_sequence_id():
    return _sequence_id


def _send_metric(kind, sequence, metric):
    assert _params or _platform is None, \
        'nni.get_next_parameter() needs to be called before report_%s_result' % (
            'intermediate' if kind == 'PERIODICAL' else 'final')
    if _platform is None:
        if kind == 'FINAL':
            _logger.info('Final result: %s', metric)
        else:
            _logger.info('Intermediate result: %s  (Index %s)', metric, sequence)
        return
    _send(_dump({
        'parameter_id': _params['parameter_id'] if _params else None,
        'trial_job_id': os.environ.get('NNI_TRIAL_JOB_ID'),
        'type': kind,
        'sequence': sequence,
        'value': _dump(metric),
    }))


def report_intermediate_result(metric):
    """Report an intermediate result (a number, or a dict whose 'default' is one)."""
    global _intermediate_seq
    _send_metric('PERIODICAL', _intermediate_seq, metric)
    _intermediate_seq += 1


def report_final_result(metric):
    """Report the trial's final result (a number, or a dict whose 'default' is one)."""
    _send_metric('FINAL', 0, metric)
