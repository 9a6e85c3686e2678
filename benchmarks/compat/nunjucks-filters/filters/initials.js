module.exports = function (value) {
  return value.split(' ').map((w) => w[0].toUpperCase()).join('');
};
